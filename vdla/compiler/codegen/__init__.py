"""Code generators: ``llvm`` (host CPU through llvmlite)."""
