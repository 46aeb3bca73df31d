from routescope.cli import main

raise SystemExit(main())
