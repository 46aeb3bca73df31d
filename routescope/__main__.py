from routescope.cli import entry

entry()
