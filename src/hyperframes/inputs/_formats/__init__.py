"""The input formats a build reads (``--input-format``), one module each, in a registry.

========== =================================================================================
folder     ``root/<label>/<video>``, frame folders, one video (:mod:`._folder`)
mmaction   ``path label`` / ``path frames label`` lists (:mod:`._mmaction`)
csv        a CSV with a header ``path[,label][,split][,start,end]`` (:mod:`._csv`)
ucf101     classInd.txt + trainlistNN / testlistNN (:mod:`._ucf101`)
hmdb51     ``<class>_test_split<N>.txt`` files (:mod:`._hmdb51`)
kinetics   ``label,youtube_id,time_start,time_end,split`` CSVs (:mod:`._kinetics`)
ssv2       Something-Something v2 JSON lists + labels JSON (:mod:`._ssv2`)
charades   Charades CSVs with ``actions`` (:mod:`._charades`)
activitynet ActivityNet's ``database`` JSON (:mod:`._activitynet`)
videofolder Hugging Face videofolder: videos + ``metadata.csv``/``.jsonl`` (:mod:`._videofolder`)
hf_disk    a ``datasets`` dataset saved with ``save_to_disk`` (:mod:`._hf_disk`)
========== =================================================================================

Each module's docstring says what DATA is, where the videos are looked for and how class ids
are assigned. A new format is a module with one ``@register_input_format`` reader, imported
below; the tests run every registered format.
"""

from __future__ import annotations

# the import order is the registration order, the order formats are listed in
# isort: off
from . import (  # noqa: F401
    _folder,
    _mmaction,
    _csv,
    _ucf101,
    _hmdb51,
    _kinetics,
    _ssv2,
    _charades,
    _activitynet,
    _videofolder,
    _hf_disk,
)

# isort: on
from ._registry import (
    InputFormat,
    detect_input_format,
    get_input_format,
    list_input_formats,
    register_input_format,
    scan_inputs,
)

__all__ = [
    "InputFormat",
    "detect_input_format",
    "get_input_format",
    "list_input_formats",
    "register_input_format",
    "scan_inputs",
]
