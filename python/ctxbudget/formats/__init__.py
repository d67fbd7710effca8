"""Provider message formats behind :mod:`ctxbudget.messages`, one module per concern.

- :mod:`.model`: the provider-neutral view (``Message``, ``Part``, ``ToolSpec``) and its error.
- :mod:`.common`: field access that reports the failing path, lossy-write checks, shared
  encodings (data URLs, base64, tool-call arguments).
- :mod:`.openai_chat`, :mod:`.openai_responses`, :mod:`.anthropic`, :mod:`.gemini`: reading
  and writing one provider's wire format each.
- :mod:`.detect`: telling the format of a message list.
- :mod:`.tools`: tool definitions in every provider's shape.
- :mod:`.langchain`: loading the optional ``langchain-core``.

Everything here is internal (hence the underscored names); the public surface, with its
documentation, is :mod:`ctxbudget.messages`.
"""
