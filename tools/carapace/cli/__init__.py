# SPDX-License-Identifier: MIT
"""The four commands, each a main(argv) that returns its exit status:
carapace-run (run), carapace-ctl (ctl), carapace-snap (snap), carapace-tls
(tls). tools/carapace-* and the installed console scripts call them."""
