"""What a build reads: the videos of a folder, a file list or a dataset's annotation
(:func:`scan_inputs`, one :class:`Source` per video with its label, split, segments and
labels), and the annotation formats it understands (:func:`list_input_formats`: Kinetics,
UCF101, HMDB51, Something-Something v2, Charades, ActivityNet, mmaction2 lists, CSV, a
Hugging Face dataset on disk, a video folder).

Imports nothing of hyperframes above ``_core``; ``hyperframes.build`` is its user."""

# ``from ._x import name as name``: for the other hyperframes packages, not public
from ._boxes import BoxRows as BoxRows  # for the build, not public
from ._boxes import match_boxes as match_boxes
from ._boxes import read_boxes as read_boxes
from ._columns import SourceColumns as SourceColumns  # for the build, not public
from ._columns import paths_at as paths_at  # for the build, not public
from ._columns import source_finder as source_finder  # for the build, not public
from ._columns import source_paths as source_paths  # for the build, not public
from ._columns import source_splits as source_splits  # for the build, not public
from ._columns import sources_named as sources_named  # for the build, not public
from ._formats import list_input_formats
from ._formats._rows import RootCheck as RootCheck  # for the build, not public
from ._scan import scan_inputs
from ._sources import Source
from ._sources import source_stat as source_stat

__all__ = ["Source", "list_input_formats", "scan_inputs"]
