"""The client's calls (`opslore.calls`, distribution opslore-client), for server-side code that imports them
from here. One source: clients/python/opslore."""

from opslore.calls import ApiError, Call

__all__ = ["ApiError", "Call"]
