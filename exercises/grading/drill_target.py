r"""A module's drill: what you write and the time to beat, the ``DRILL`` of its ``modules/<module>/checks.py``.

It sits apart from ``drill.py`` (which runs the drills and finds them in the module folders) so
that a module's checks can name its drill without importing the code that reads those checks.
"""
import dataclasses


@dataclasses.dataclass(frozen=True)
class Drill:
    r"""A module's drill, the ``DRILL`` of its ``modules/<module>/checks.py``; its name is the module's."""
    names: tuple  # the functions and classes you write
    minutes: float  # the target time, from the source chapter's "Retype by hand" table
    module: str = ""  # the solutions module it is cut from: filled in from the folder it is found in

    @property
    def name(self):
        """What you type after `drill`: the module's name."""
        return self.module
