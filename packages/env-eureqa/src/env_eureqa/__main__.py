from env_eureqa.cli import main

raise SystemExit(main())
