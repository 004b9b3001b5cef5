import { defineConfig } from "vitest/config";

// Plain Vite with esbuild's automatic JSX runtime pointed at Preact: no Babel preset needed.
export default defineConfig({
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  clearScreen: false,
  server: { port: 1420, strictPort: true },
  build: { target: "es2022", outDir: "dist", emptyOutDir: true, sourcemap: false },
  test: { include: ["src/**/*.test.ts"], environment: "node" },
});
