# Packaging: ABI checks, man pages, distcheck helpers (filled in by the packaging work).
