"""``python -m swe_srl.cli``."""

from swe_srl.cli.app import main

main()
