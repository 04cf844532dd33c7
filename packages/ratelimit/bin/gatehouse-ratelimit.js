#!/usr/bin/env node
// Thin launcher: the compiled entry point does the work (see src/main.ts).
import '../dist/main.js'
