//! JSON Schema validation of tool arguments and results (placeholder; being written).
