from vpo_core.scaffold import main

raise SystemExit(main())
