"""PLACEHOLDER"""
def infer_type(expr, mod=None): raise NotImplementedError
