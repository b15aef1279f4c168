"""``dreamrsi report``: a self-contained folder (``index.html`` and PNG figures drawn with
matplotlib) of a run, a loop or a task, for papers and pull requests.

An interface: it reads the store through :mod:`dreamrsi.views` and :mod:`dreamrsi.panels`,
the same JSON the dashboard shows. matplotlib is the ``report`` extra, imported only here.
"""
