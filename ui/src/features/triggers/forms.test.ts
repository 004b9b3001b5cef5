import { describe, expect, it } from "vitest";
import {
  EMPTY_MCP_FORM,
  commandLineOf,
  describeNextFire,
  hookUrl,
  parseEnv,
  relativeTime,
  splitArgs,
  toNewMcpServer,
} from "./forms";

describe("splitArgs", () => {
  it("splits on whitespace and keeps quoted words whole", () => {
    expect(splitArgs("  npx -y  @modelcontextprotocol/server-filesystem ")).toEqual([
      "npx",
      "-y",
      "@modelcontextprotocol/server-filesystem",
    ]);
    expect(splitArgs(`node "my server.js" 'a "b"' c\\ d`)).toEqual(["node", "my server.js", 'a "b"', "c d"]);
    expect(splitArgs(`echo "say \\"hi\\"" ''`)).toEqual(["echo", 'say "hi"', ""]);
    expect(splitArgs("a'b'c")).toEqual(["abc"]);
    expect(splitArgs("")).toEqual([]);
  });

  it("refuses an unterminated quote", () => {
    expect(() => splitArgs(`node "server.js`)).toThrow(/double quote/);
    expect(() => splitArgs("node 'server.js")).toThrow(/single quote/);
  });

  it("round-trips through commandLineOf", () => {
    const words = ["node", "my server.js", "it's", "", "plain"];
    const line = commandLineOf(words[0], words.slice(1));
    expect(splitArgs(line)).toEqual(words);
    expect(commandLineOf("npx", ["-y", "x"])).toBe("npx -y x");
  });
});

describe("parseEnv", () => {
  it("reads NAME=value lines and skips blanks", () => {
    expect(parseEnv("A=1\n\n  B = two=2 \n")).toEqual([
      ["A", "1"],
      ["B", " two=2"],
    ]);
    expect(parseEnv("")).toEqual([]);
  });

  it("refuses a line without a name", () => {
    expect(() => parseEnv("JUSTANAME")).toThrow(/NAME=value/);
    expect(() => parseEnv("=x")).toThrow(/NAME=value/);
  });
});

describe("toNewMcpServer", () => {
  it("builds a stdio server for every workspace", () => {
    const s = toNewMcpServer({
      ...EMPTY_MCP_FORM,
      name: " files ",
      commandLine: "npx -y server-filesystem /tmp",
      env: "DEBUG=1",
      allowReadOnly: true,
      callTimeout: "30",
    });
    expect(s).toEqual({
      name: "files",
      workspace: null,
      command: "npx",
      args: ["-y", "server-filesystem", "/tmp"],
      env: [["DEBUG", "1"]],
      url: null,
      capability: null,
      allow_read_only: true,
      startup_timeout_secs: null,
      call_timeout_secs: 30,
    });
  });

  it("builds an HTTP server for one workspace, ignoring the command fields", () => {
    const s = toNewMcpServer({
      ...EMPTY_MCP_FORM,
      name: "web",
      kind: "http",
      workspace: "/home/me/project",
      url: " http://127.0.0.1:3001/mcp ",
      commandLine: "ignored",
      capability: "mcp:read",
    });
    expect(s.url).toBe("http://127.0.0.1:3001/mcp");
    expect(s.command).toBeNull();
    expect(s.args).toEqual([]);
    expect(s.workspace).toBe("/home/me/project");
    expect(s.capability).toBe("mcp:read");
  });

  it("says what is missing or wrong", () => {
    expect(() => toNewMcpServer({ ...EMPTY_MCP_FORM, commandLine: "x" })).toThrow(/name/);
    expect(() => toNewMcpServer({ ...EMPTY_MCP_FORM, name: "a" })).toThrow(/command/);
    expect(() => toNewMcpServer({ ...EMPTY_MCP_FORM, name: "a", kind: "http" })).toThrow(/URL/);
    expect(() => toNewMcpServer({ ...EMPTY_MCP_FORM, name: "a", commandLine: "x", startupTimeout: "1.5" })).toThrow(
      /startup timeout/,
    );
  });
});

describe("hook URLs and fire times", () => {
  it("joins the listener and the hook name", () => {
    expect(hookUrl("http://127.0.0.1:8765", "deploy")).toBe("http://127.0.0.1:8765/hooks/deploy");
    expect(hookUrl("http://127.0.0.1:8765/", "a_b-1")).toBe("http://127.0.0.1:8765/hooks/a_b-1");
  });

  it("describes the next fire in UTC and how soon", () => {
    const now = new Date("2025-03-01T10:00:00Z");
    expect(describeNextFire("2025-03-01T10:05:00+00:00", false, now)).toBe("2025-03-01 10:05 UTC (in 5 min)");
    expect(describeNextFire("2025-03-01T13:20:00Z", false, now)).toBe("2025-03-01 13:20 UTC (in 3 h 20 min)");
    expect(describeNextFire("2025-03-01T13:20:00Z", true, now)).toBe("paused");
    expect(describeNextFire(null, false, now)).toBe("never");
    expect(relativeTime(new Date("2025-03-04T10:00:00Z"), now)).toBe("in 3 days");
    expect(relativeTime(new Date("2025-03-01T12:00:00Z"), now)).toBe("in 2 h");
    expect(relativeTime(now, now)).toBe("now");
  });
});
