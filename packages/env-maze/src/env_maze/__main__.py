from env_maze.cli import main

raise SystemExit(main())
