/** The witness seeds' topology (cli.ts --witness-seeds): 3 voters, one a witness, on even seeds; 5 on odd ones. */
export function witnessTopology(seed: number): { nodes: number; witnesses: number } {
  return { nodes: seed % 2 === 0 ? 3 : 5, witnesses: 1 };
}
