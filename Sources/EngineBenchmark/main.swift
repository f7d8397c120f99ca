print("engine-bench: benchmarks arrive with the next commit")
