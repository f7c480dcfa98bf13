"""What every tenant table rests on, below the tables themselves: the tenant the database enforces
(`db_context`), who acts (`context`), and the keyed seal on every row a decision rests on, with
its per-tenant chain heads and keys (`seals`, `heads`, `keys`). `tenancy.models` builds its sealed
base classes on it and `audit/` verifies and exports what it wrote; it imports neither."""
