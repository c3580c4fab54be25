"""Junction's tests (a package, so ``tests.helpers`` resolves to this folder, never to a
site-packages ``tests`` that a dependency ships: baycomp 1.0.3 installs one)."""
