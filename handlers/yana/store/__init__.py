"""yana's persistence on the runtime's database: labels.py (tables and SQL), kb.py (the knowledge base: first-start loading, search documents)."""
