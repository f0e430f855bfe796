"""Postmortem import (CONTRACT v1.2 "Postmortem import"): the team's own postmortems, parsed, turned into ledger
events and, through the projector's imported path, into candidates a reviewer approves.

`model`, `markdown`, `json_format`, `instructions` and `events` are pure (text in, values out); `exporters`
converts incident tools' exports to the json format; `service` (`PostmortemImporter`) appends the events.
"""
