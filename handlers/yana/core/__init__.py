"""yana's domain logic: chat, search, ingest, the reply policy and the LLM (no SQL, no environment)."""
