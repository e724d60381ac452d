"""JSON Schemas of the model, installed as package data (see netcfg/schemas/spec.py)."""
