from env_lcb.cli import main

raise SystemExit(main())
