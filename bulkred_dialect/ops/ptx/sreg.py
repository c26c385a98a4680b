"""(to be written)"""

SREG_OPS: list = []
SREG_ATTRS: list = []
