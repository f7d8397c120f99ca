print("object-bench: not written yet")
