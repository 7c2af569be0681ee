from env_ultrafeedback.cli import main

raise SystemExit(main())
