"""(to be written)"""

MEMORY_OPS: list = []
MEMORY_ATTRS: list = []
