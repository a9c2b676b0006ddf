/** A class whose public members test/docs/client-members.test.ts knows: a, b, c, d. */
export class Sample {
  readonly a = 1;
  #hidden = 2;
  private secret = 3;
  protected kept = 4;
  static d(): number {
    return 0;
  }

  constructor() {
    this.secret += this.#hidden + this.kept;
  }

  b(x: string): string;
  b(x: number): number;
  b(x: string | number): string | number {
    return x;
  }

  get c(): number {
    return this.secret;
  }
  set c(value: number) {
    this.secret = value;
  }
}
