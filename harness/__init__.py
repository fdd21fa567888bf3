"""The process harness the demo, the benchmarks and the integration tests share: start the
installed nodes as processes with the config/ files, and record the loop from outside. Not
installed: the package holds the library, the nodes and the CLI tools only.
"""
