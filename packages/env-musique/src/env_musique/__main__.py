from env_musique.cli import main

raise SystemExit(main())
