/** A configuration value Outpost cannot start with: the message names the variable, what it must be and what it was. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}
