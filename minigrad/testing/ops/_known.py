"""Reasons for xfail declarations shared by several families: known bugs the table found and
error messages other work is changing. Remove a reason (and its uses) once it is fixed."""

GRAD_0D = ("backward on a 0-d input leaves x.grad holding a NumPy scalar instead of a 0-d "
           "array (x.grad.numpy() raises AttributeError: no attribute 'get')")
AXIS_ERR = ("a bad axis raises IndexError 'Dimension out of range' as in PyTorch "
            "(today: ValueError, NumPy's AxisError or a bare IndexError)")
