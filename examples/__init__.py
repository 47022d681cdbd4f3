"""Examples shipped with msmq-harness: the JSON-lines adapter and the mutants of the reference."""
