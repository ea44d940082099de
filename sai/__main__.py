from sai.app import main

raise SystemExit(main())
