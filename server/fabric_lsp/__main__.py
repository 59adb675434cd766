from fabric_lsp.cli import main

raise SystemExit(main())
