"""yana's domain logic: chat, search, ingest, the reply policy, the LLM and text analysis (no SQL, no environment)."""
