"""The generator: specs/ -> generated/ (python -m codegen)."""
