"""(to be written)"""

RED_ASYNC_OPS: list = []
RED_ASYNC_ATTRS: list = []
