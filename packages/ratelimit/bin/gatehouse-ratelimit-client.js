#!/usr/bin/env node
// Thin launcher: the compiled entry point does the work (see src/client/cli.ts).
import '../dist/client/cli.js'
