"""(to be written)"""

BULK_OPS: list = []
BULK_ATTRS: list = []
