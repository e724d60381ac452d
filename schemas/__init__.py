"""JSON Schemas of the model, installed as package data (see netcfg/schema.py)."""
