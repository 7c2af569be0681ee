from env_toolrl.cli import main

raise SystemExit(main())
