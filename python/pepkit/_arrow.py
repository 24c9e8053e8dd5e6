"""Arrow streams from the native module as pyarrow tables."""

import pyarrow as pa


def tables(streams):
    """``[(name, stream)]`` as ``{name: pyarrow.Table}``, through the Arrow
    PyCapsule stream interface: the data is not copied through text."""
    return {name: pa.table(s) for name, s in streams}
