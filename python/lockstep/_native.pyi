"""Type stubs of the private native module ``lockstep._native`` (crates/python).

Use the public API of ``lockstep`` instead; these names may change between releases.
"""

from typing import Any, Dict, List

__version__: str

def canonical(obj: Any, profile: str = "python") -> bytes: ...
def fingerprint(obj: Any, profile: str = "python") -> str: ...
def diff(a: Any, b: Any) -> Dict[str, List[Any]]: ...
