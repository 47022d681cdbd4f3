"""Deliberately broken variants of the reference queue manager ("mutants").

Each class overrides exactly one processing rule of [MS-MQDMPR] and names it in its docstring;
``python -m harness.cases.mutants`` runs the corpus (cases/) against every one and fails unless
each is caught by at least one case. Run one by hand with
``msmq-harness run cases --target plugin:examples.mutants.<module>:<Class>``.
"""
