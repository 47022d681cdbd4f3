"""Declarative conformance cases: schema, loader, targets and runner (docs/cases.md)."""
