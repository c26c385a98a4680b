"""(to be written)"""

SYNC_OPS: list = []
SYNC_ATTRS: list = []
