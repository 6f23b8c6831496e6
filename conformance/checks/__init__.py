"""conformance/checks."""
