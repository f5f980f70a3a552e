"""`python -m codegen.raises`: the declared-raises check (see codegen.raises)."""

from codegen.raises import main

raise SystemExit(main())
