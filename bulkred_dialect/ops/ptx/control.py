"""(to be written)"""

CONTROL_OPS: list = []
CONTROL_ATTRS: list = []
