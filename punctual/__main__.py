from punctual.cli import main

main()
